/* SPDX-License-Identifier: GPL-3.0-or-later */
/*
 * explorer.js: dicomhist's panel in Orthanc Explorer (served by Orthanc at /plugins/explorer.js,
 * compiled into the plugin by embed_text.cmake). On a series or an instance page: the histogram
 * plot (histogram.svg, inlined so it scales and can be read), before/after previews
 * (preview.png in every mode /dicomhist/preview-modes lists: original, equalize, window, and
 * CLAHE once the library has it), and on
 * a series the buttons that create the derived series or the presentation state through the
 * derive routes as Orthanc jobs, with the job's progress and a link to what it made.
 * Orthanc Explorer is jQuery 1.x and jQuery Mobile: pages are shown with 'pagebeforeshow',
 * the resource's ID is $.mobile.pageData.uuid.
 */
(function () {
  'use strict';
  var JOB_POLL_MS = 500;

  function el(tag, attrs, text) {
    var e = $('<' + tag + '>');
    if (attrs) e.attr(attrs);
    if (text !== undefined) e.text(text);
    return e;
  }

  /* A query value: Orthanc hands query values to plugins as sent, without decoding %3A, so
   * the colon of "C:W" and "LO:HI" stays a colon. */
  function q(value) {
    return encodeURIComponent(value).replace(/%3A/gi, ':');
  }

  /* An error answer of the plugin ({HttpStatus, Error, Reason}) as one line of text. */
  function errorText(xhr) {
    try {
      var j = JSON.parse(xhr.responseText);
      return (j.HttpStatus || xhr.status) + ' ' + (j.Error || '') + ': ' + (j.Reason || j.Message || '');
    } catch (e) {
      return 'HTTP ' + xhr.status + ' ' + (xhr.statusText || '');
    }
  }

  function drawPlot(box, family, id) {
    var holder = box.find('.dicomhist-plot').empty().text('Drawing the histogram...');
    var query = '?scale=' + q(box.find('.dicomhist-scale').val());
    var bins = $.trim(box.find('.dicomhist-bins').val());
    if (bins) query += '&bins=' + q(bins);
    if (box.find('.dicomhist-units').is(':checked')) {
      query += '&units=modality';
      // A center/width window is in modality units: marked on a modality-unit plot only.
      var w = $.trim(box.find('.dicomhist-window').val());
      if (/^-?[0-9.]+:[0-9.]+$/.test(w)) query += '&window=' + q(w);
    }
    if (family === 'series' && box.find('.dicomhist-slices').is(':checked')) query += '&slices=true';
    $.ajax({
      url: '../' + family + '/' + id + '/histogram.svg' + query,
      dataType: 'text',
      success: function (text) {
        var doc = new DOMParser().parseFromString(text, 'image/svg+xml');
        var svg = document.importNode(doc.documentElement, true);
        svg.setAttribute('style', 'max-width:100%;height:auto;background:#fff');
        holder.empty().append(svg).attr('data-query', query).attr('data-state', 'drawn');
      },
      error: function (xhr) {
        holder.empty().attr('data-state', 'failed').append(el('p', {'class': 'dicomhist-error'}, errorText(xhr)));
      }
    });
  }

  /* The modes this plugin draws (GET /dicomhist/preview-modes), asked once. */
  var modes = null;
  function withModes(then) {
    if (modes) return then(modes);
    $.ajax({url: '../dicomhist/preview-modes', dataType: 'json',
            success: function (m) { modes = m; then(m); }});
  }

  function drawPreviews(box, instance) {
    var row = box.find('.dicomhist-previews').empty();
    var windowSpec = $.trim(box.find('.dicomhist-window').val());
    withModes(function (list) {
      $.each(list, function (i, mode) {
        var src = '../instances/' + instance + '/preview.png?mode=' + mode;
        if (windowSpec && mode !== 'original') src += '&window=' + q(windowSpec);
        var cell = el('div', {'class': 'dicomhist-preview', 'data-mode': mode,
                              style: 'display:inline-block;margin:0 12px 12px 0;vertical-align:top'});
        cell.append(el('div', {style: 'font-weight:bold'}, mode),
                    el('img', {src: src, alt: mode,
                               style: 'width:256px;height:auto;image-rendering:pixelated;border:1px solid #999'}));
        row.append(cell);
      });
    });
  }

  /* POSTs to a derive route as a job and shows the job's state until it ends. */
  function derive(box, series, route, body, label) {
    var status = box.find('.dicomhist-job');
    body.Asynchronous = true;
    status.attr('data-state', 'submitted').text(label + ': submitted');
    $.ajax({
      url: '../series/' + series + '/' + route, type: 'POST', data: JSON.stringify(body),
      dataType: 'json',
      success: function (job) { follow(status, job.ID, label); },
      error: function (xhr) {
        status.attr('data-state', 'failed').text(label + ': ' + errorText(xhr));
      }
    });
  }

  function follow(status, job, label) {
    $.ajax({
      url: '../jobs/' + job, dataType: 'json',
      success: function (j) {
        if (j.State === 'Success') {
          var made = j.Content || {};
          status.attr('data-state', 'done').empty().append(
            document.createTextNode(label + ': done, '),
            el('a', {href: '#series?uuid=' + made.ID, 'class': 'dicomhist-made',
                     'data-id': made.ID}, 'series ' + made.ID));
        } else if (j.State === 'Failure') {
          var c = j.Content || {};
          status.attr('data-state', 'failed').text(label + ': failed: ' + (c.Reason || j.ErrorDescription || ''));
        } else {
          status.attr('data-state', 'running').text(label + ': ' + j.State + ' ' + j.Progress + '%');
          setTimeout(function () { follow(status, job, label); }, JOB_POLL_MS);
        }
      },
      error: function (xhr) { status.attr('data-state', 'failed').text(label + ': ' + errorText(xhr)); }
    });
  }

  function controls(box, family) {
    var c = el('div', {'class': 'dicomhist-controls'});
    c.append(el('label', {}, 'Scale '),
             el('select', {'class': 'dicomhist-scale', 'data-role': 'none'}).append(
               el('option', {value: 'both'}, 'linear + log'), el('option', {value: 'linear'}, 'linear'),
               el('option', {value: 'log'}, 'log')),
             el('label', {}, ' Bins '),
             el('input', {'class': 'dicomhist-bins', type: 'text', size: 6, 'data-role': 'none',
                          placeholder: 'all'}),
             el('label', {}, ' Modality units '),
             el('input', {'class': 'dicomhist-units', type: 'checkbox', 'data-role': 'none'}));
    if (family === 'series')
      c.append(el('label', {}, ' Per slice '),
               el('input', {'class': 'dicomhist-slices', type: 'checkbox', 'data-role': 'none'}));
    c.append(el('label', {}, ' Window '),
             el('input', {'class': 'dicomhist-window', type: 'text', size: 14, 'data-role': 'none',
                          value: 'percentile:1', title: 'C:W, file, minmax or percentile:P'}),
             el('button', {'class': 'dicomhist-redraw', 'data-role': 'none'}, 'Redraw'));
    return c;
  }

  function show(pageId, family) {
    var page = $('#' + pageId);
    page.find('.dicomhist-panel').remove();
    if (!$.mobile.pageData || !$.mobile.pageData.uuid) return;
    var id = $.mobile.pageData.uuid;
    var box = el('div', {'class': 'dicomhist-panel', id: 'dicomhist-' + pageId,
                         style: 'clear:both;padding:10px;border-top:1px solid #ccc'});
    box.append(el('h3', {}, 'dicomhist: histogram and enhancement'), controls(box, family),
               el('div', {'class': 'dicomhist-plot'}),
               el('h4', {}, 'Before and after'), el('div', {'class': 'dicomhist-previews'}));
    if (family === 'series') {
      var actions = el('div', {'class': 'dicomhist-actions'});
      actions.append(
        el('button', {'class': 'dicomhist-make-equalized', 'data-role': 'none'}, 'Create equalized series'),
        el('button', {'class': 'dicomhist-make-windowed', 'data-role': 'none'}, 'Create windowed series'),
        el('button', {'class': 'dicomhist-make-gsps', 'data-role': 'none'}, 'Create presentation state (GSPS)'),
        el('p', {'class': 'dicomhist-job'}));
      box.append(actions);
    }
    page.find('div[data-role="content"]').first().append(box);

    var previewOf = function (instance) {
      drawPreviews(box, instance);
      box.find('.dicomhist-redraw').off('click').on('click', function () {
        drawPlot(box, family, id);
        drawPreviews(box, instance);
      });
    };
    drawPlot(box, family, id);
    if (family === 'series') {
      // The middle instance in Orthanc's slice order stands for the series.
      $.ajax({url: '../series/' + id + '/ordered-slices', dataType: 'json',
              success: function (o) {
                var ids = $.map(o.Dicom || [], function (p) { return p.split('/')[2]; });
                if (ids.length) previewOf(ids[Math.floor(ids.length / 2)]);
              }});
      var windowBody = function () {
        var w = $.trim(box.find('.dicomhist-window').val());
        return w ? {Window: w} : {};
      };
      box.find('.dicomhist-make-equalized').on('click', function () {
        derive(box, id, 'equalize', windowBody(), 'Equalized series');
      });
      box.find('.dicomhist-make-windowed').on('click', function () {
        derive(box, id, 'window', windowBody(), 'Windowed series');
      });
      box.find('.dicomhist-make-gsps').on('click', function () {
        var body = windowBody();
        body.Output = 'gsps';
        derive(box, id, 'equalize', body, 'Presentation state');
      });
    } else {
      previewOf(id);
    }
  }

  $('#series').live('pagebeforeshow', function () { show('series', 'series'); });
  $('#instance').live('pagebeforeshow', function () { show('instance', 'instances'); });
})();

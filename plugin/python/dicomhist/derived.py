# SPDX-License-Identifier: MIT
"""Enhancement written as derived DICOM (and PNG previews), as `dicomhist equalize` and
`dicomhist window` write it, through the library's derived output (dicomhist.h section 6)."""
import os

import numpy as np

from . import _core
from ._context import ctx
from .equalize import clahe_fields, equalize_fields, window_fields
from .volume import Volume

_OPERATIONS = {"equalize": equalize_fields, "clahe": clahe_fields, "window": window_fields}
_UIDS = {"random": _core.UIDS_RANDOM, "derived": _core.UIDS_DERIVED}
_EXISTING = {"fail": _core.EXISTING_FAIL, "replace": _core.EXISTING_REPLACE,
             "keep": _core.EXISTING_KEEP}


class Derived:
    """What write_derived wrote: `pixels` (the new stored values, (slices, rows, columns)
    uint16, the numbers in the files), `files` (the DICOM files, in the volume's order of their
    first slice), `sop_uids`, `sources` (the file each was derived from), `series_uid`, `pngs`
    (the previews written, [] without png), `description` (the DerivationDescription) and
    `device` ('cpu' or 'cuda')."""

    def __init__(self, r):
        self.pixels = np.frombuffer(r["data"], dtype=np.uint16).reshape(
            r["slices"], r["rows"], r["columns"])
        self.output_bits = r["output_bits"]
        for key in ("files", "sop_uids", "sources", "series_uid", "pngs", "description",
                    "device"):
            setattr(self, key, r[key])

    def __repr__(self):
        return (f"<dicomhist.Derived {len(self.files)} file(s) in series {self.series_uid}: "
                f"{self.description}>")


def _choice(table, value, name):
    try:
        return table[value]
    except (KeyError, TypeError):
        raise ValueError(f"{name} must be one of {', '.join(table)}, not {value!r}") from None


def write_derived(volume, output_dir, operation="equalize", png=None, uids="random",
                  existing="fail", created=None, **options):
    """Computes `operation` ('equalize', 'clahe' or 'window', with the options of the function
    of that name) on a Volume read from files and writes the result as one derived series into
    output_dir (the source's file names; a series of several files in its own folder), and an
    8-bit PNG per slice into png when given, exactly as the command writes them: new UIDs
    (uids='derived': named after the source and the work, the command's choice, so the same
    work gives the same UIDs), ImageType DERIVED\\SECONDARY, the sources referenced, the
    photometric interpretation kept. existing: 'fail' (default), 'replace' or 'keep' (an
    output that is this very instance already). created: seconds since 1970 written as the
    content date and time (None: now). Returns a Derived."""
    if not isinstance(volume, Volume):
        raise TypeError("write_derived needs a Volume read from DICOM files (dicomhist.read): "
                        "the derived files copy its sources' tags")
    fields = _choice(_OPERATIONS, operation, "operation")(**options)
    # A volume read with device='cuda' computes and encodes on its host copy (the encoders run
    # on the host): its samples are copied down once.
    r = _core.write_derived(ctx(), volume.host_handle(), os.fspath(output_dir),
                            png=None if png is None else os.fspath(png),
                            uids=_choice(_UIDS, uids, "uids"),
                            existing=_choice(_EXISTING, existing, "existing"),
                            created=None if created is None else int(created), **fields)
    return Derived(r)

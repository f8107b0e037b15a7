# SPDX-License-Identifier: MIT
# Writes the manual page dicomhist.1.gz from the built command's own --help texts (the command's
# and each subcommand's), so that it says what the command does. Run by cmake -P with
# CLI (the built command), VERSION, COMMANDS (comma-separated) and OUT (the .1.gz to write).
function(help_text out) # ARGN: arguments before --help
  execute_process(COMMAND ${CLI} ${ARGN} --help OUTPUT_VARIABLE text RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${CLI} ${ARGN} --help: exit status ${status}")
  endif()
  # roff: a backslash is \e; a line starting with . or ' would be a request: \& before it.
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${out} ".nf\n${text}.fi\n" PARENT_SCOPE)
endfunction()

help_text(main)
string(CONCAT page ".TH DICOMHIST 1 \"\" \"dicomhist ${VERSION}\" \"User Commands\"\n"
         ".SH NAME\n"
         "dicomhist \\- histograms, equalization and mutual information of DICOM images\n"
         ".SH SYNOPSIS\n"
         ".B dicomhist\n"
         "\\fICOMMAND\\fR [\\fIOPTION\\fR]... \\fIPATH\\fR...\n"
         ".SH DESCRIPTION\n" "${main}")
string(REPLACE "," ";" COMMANDS "${COMMANDS}")
foreach(command IN LISTS COMMANDS)
  help_text(text ${command})
  string(APPEND page ".SH \"dicomhist ${command}\"\n" "${text}")
endforeach()
string(APPEND page ".SH \"SEE ALSO\"\n"
       "docs/command-line.md in dicomhist's source tree describes every command and field.\n")
file(WRITE "${OUT}.tmp" "${page}")
# -n: no name nor time stamp in the archive, so the same command gives the same file
execute_process(COMMAND gzip -9n -c "${OUT}.tmp" OUTPUT_FILE "${OUT}" RESULT_VARIABLE status)
file(REMOVE "${OUT}.tmp")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "gzip failed: ${status}")
endif()

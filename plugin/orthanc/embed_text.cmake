# SPDX-License-Identifier: GPL-3.0-or-later
# Writes the text file INPUT as a C source OUTPUT defining `const char NAME[]` (NUL-terminated),
# so the plugin carries its Orthanc Explorer script inside the one .so that is installed.
# Usage: cmake -DINPUT=... -DOUTPUT=... -DNAME=... -P embed_text.cmake
file(READ "${INPUT}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n"
       bytes "${bytes}")
file(WRITE "${OUTPUT}" "/* Generated from ${INPUT} by embed_text.cmake: do not edit. */\n"
     "const char ${NAME}[] = {\n${bytes}0x00};\n")

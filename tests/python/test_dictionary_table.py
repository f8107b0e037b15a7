#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_dictionary_table.py: dicom/dicom_dictionary.cpp registers every attribute dicom/ uses,
with DCMTK's own VR and VM for it.

Every DCM_ attribute constant in dicom/*.cpp must be in the table (so a new one cannot make
reading depend on the dictionary file again), under the tag dcdeftag.h gives it, and each row
must agree with DCMTK 3.6.7's dicom.dic. Exit 77 when DCMTK's header or dictionary is absent.

Usage: test_dictionary_table.py PROJECT_ROOT
"""
import glob
import os
import re
import sys

DEFTAG = "/usr/include/dcmtk/dcmdata/dcdeftag.h"
DICT = "/usr/share/libdcmtk17/dicom.dic"
NOT_ATTRIBUTES = {"MaxReadLength", "UndefinedLength", "PixelItemTag", "PixelSequenceTag",
                  "ItemTag", "SequenceDelimitationItemTag", "ItemDelimitationItemTag"}


def main():
    root = sys.argv[1]
    if not (os.path.isfile(DEFTAG) and os.path.isfile(DICT)):
        print(f"SKIP: {DEFTAG} or {DICT} is absent")
        sys.exit(77)
    tags = {m.group(1): (int(m.group(2), 16), int(m.group(3), 16)) for m in re.finditer(
        r"#define DCM_(\w+)\s+DcmTagKey\(0x([0-9a-fA-F]{4}), 0x([0-9a-fA-F]{4})\)",
        open(DEFTAG).read())}
    dic = {}
    for line in open(DICT):
        f = line.rstrip("\n").split("\t")
        if line.startswith("#") or len(f) < 4:
            continue
        dic.setdefault(f[2], (f[1], f[3]))
    table_src = open(os.path.join(root, "dicom", "dicom_dictionary.cpp")).read()
    table = {m.group(4): ((int(m.group(1), 16), int(m.group(2), 16)), m.group(3), m.group(5),
                          m.group(6))
             for m in re.finditer(r'\{0x(\w{4}), 0x(\w{4}), "(\w\w)", "(\w+)", (\d+), (\w+)\}',
                                  table_src)}
    used = set()
    for path in glob.glob(os.path.join(root, "dicom", "*.cpp")):
        used |= set(re.findall(r"\bDCM_(\w+)", open(path).read())) - NOT_ATTRIBUTES
    failures = []
    for name in sorted(used):
        if name not in table:
            failures.append(f"DCM_{name} is used in dicom/ but not in dicom_dictionary.cpp")
        elif tags.get(name) != table[name][0]:
            failures.append(f"{name}: tag {table[name][0]} in the table, {tags.get(name)} in "
                            "dcdeftag.h")
    for name, (tag, vr, vm_min, vm_max) in sorted(table.items()):
        if name not in dic:
            failures.append(f"{name} is not in {DICT}")
            continue
        want_vr, vm = dic[name]
        lo, _, hi = vm.partition("-")
        want = (want_vr, lo, "DcmVariableVM" if "n" in hi else (hi or lo))
        if (vr, vm_min, vm_max) != want:
            failures.append(f"{name}: {(vr, vm_min, vm_max)} in the table, {want} in {DICT}")
    for f in failures:
        print(f"FAIL: {f}")
    print(f"{len(table)} entries, {len(used)} attributes used in dicom/, {len(failures)} "
          "problems")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

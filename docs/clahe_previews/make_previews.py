#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""make_previews.py: the CLAHE previews of docs/equalization.md, made by the command. For each
CR and DX file of ../shared/dicom: `dicomhist window --window minmax --png` (the original,
linear over its range), `dicomhist equalize --window percentile:1 --clip-limit 3 --png` (global
equalization as issue 21 tried it) and `dicomhist equalize --method clahe --mode slice
--clip-limit 2 --png` (CLAHE, 8x8 tiles, full resolution); the three PNGs the command wrote are
put side by side, each scaled to 300 pixels wide (Pillow, Lanczos), into NAME.png here.

Usage: make_previews.py DICOMHIST_BINARY SHARED_DICOM_DIR
"""
import os
import subprocess
import sys
import tempfile

from PIL import Image

FILES = ["fo-dicom_CR-MONO1-10-chest", "pylibjpeg-data_RG2_JPLL.dcm",
         "highdicom_dx_image_8bit.dcm"]
RUNS = [["window", "--window", "minmax"],
        ["equalize", "--window", "percentile:1", "--clip-limit", "3"],
        ["equalize", "--method", "clahe", "--mode", "slice", "--clip-limit", "2"]]
WIDTH = 300


def main():
    binary, shared = sys.argv[1], sys.argv[2]
    here = os.path.dirname(os.path.abspath(__file__))
    for name in FILES:
        panels = []
        for k, run in enumerate(RUNS):
            with tempfile.TemporaryDirectory() as work:
                png = os.path.join(work, "png")
                subprocess.run([binary, *run, "--bits", "8", "-o", os.path.join(work, "out"),
                                "--png", png, os.path.join(shared, name)], check=True,
                               capture_output=True)
                found = [os.path.join(d, f) for d, _, fs in os.walk(png) for f in fs]
                img = Image.open(found[0]).convert("L")
                height = round(img.height * WIDTH / img.width)
                panels.append(img.resize((WIDTH, height), Image.LANCZOS))
        sheet = Image.new("L", (WIDTH * 3 + 8, panels[0].height), 255)
        for k, p in enumerate(panels):
            sheet.paste(p, (k * (WIDTH + 4), 0))
        out = os.path.join(here, os.path.splitext(name)[0] + ".png")
        sheet.save(out, optimize=True)
        print(out, os.path.getsize(out))


if __name__ == "__main__":
    main()

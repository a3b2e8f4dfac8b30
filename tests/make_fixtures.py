#!/usr/bin/python3
"""Regenerates the PyTorch reference fixtures under tests/fixtures/.

Each tests/fixtures/gen_<area>.py writes tests/fixtures/<area>.json (float64 values printed with
full precision). The tests read the JSON files and never need PyTorch; run this only to change
or extend the fixtures. Needs Debian's python3-torch:  /usr/bin/python3 tests/make_fixtures.py
"""
import pathlib
import runpy
import sys

here = pathlib.Path(__file__).resolve().parent / "fixtures"
sys.path.insert(0, str(here))
for script in sorted(here.glob("gen_*.py")):
    print(f"running {script.name}")
    runpy.run_path(str(script), run_name="__main__")

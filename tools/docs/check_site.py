#!/usr/bin/python3
"""The documentation's test: builds the site as `make docs` does, checks every internal link and
anchor of the built pages offline (linkchecker), checks that the guides' C++ blocks are
included from snippet files and that the README's program is one of them, and runs every
snippet program.

    tools/docs/check_site.py --program ATTOGRAD --out DIR --snippets PROG[,PROG...]
"""
import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")


def inline_cpp_blocks(page: Path):
    """Line numbers of ```cpp blocks whose body is not only `--8<--` includes."""
    found, lines, i = [], page.read_text().splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m and m.group(2) in ("cpp", "c++"):
            start, i = i, i + 1
            body = []
            while i < len(lines) and not FENCE.match(lines[i]):
                body.append(lines[i].strip())
                i += 1
            if any(line and not line.startswith("--8<--") for line in body):
                found.append(start + 1)
        i += 1
    return found


def readme_program_is_a_snippet() -> str:
    """The README's C++ program must be docs/snippets/train_reverse.cpp, byte for byte."""
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```cpp\n(.*?)```", text, re.S)
    snippet = (ROOT / "docs" / "snippets" / "train_reverse.cpp").read_text()
    if len(blocks) != 1 or blocks[0] != snippet:
        return "README.md: its ```cpp block must be docs/snippets/train_reverse.cpp exactly"
    return ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", required=True)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--snippets", default="", help="comma-separated snippet programs to run")
    args = parser.parse_args()
    failures = []

    for page in sorted((ROOT / "docs").rglob("*.md")):
        for line in inline_cpp_blocks(page):
            failures.append(f"{page.relative_to(ROOT)}:{line}: a C++ block that is not included from a snippet file")
    problem = readme_program_is_a_snippet()
    if problem:
        failures.append(problem)

    subprocess.run([sys.executable, str(ROOT / "tools" / "docs" / "build_site.py"), "--program", args.program,
                    "--out", str(args.out)], check=True)

    # Internal links and anchors only (no network); the Doxygen pages are checked as link
    # targets but not crawled.
    with tempfile.NamedTemporaryFile("w", suffix=".ini") as config:
        config.write("[checking]\nthreads=4\n[filtering]\ncheckextern=0\n[AnchorCheck]\n")
        config.flush()
        result = subprocess.run(["linkchecker", "--config", config.name, "--no-status",
                                 "--ignore-url=^https?:", "--ignore-url=^mailto:",
                                 "--no-follow-url=/api/", str(args.out / "index.html")],
                                text=True, capture_output=True)
    # A missing anchor is only a warning to linkchecker: every warning fails the test.
    summary = re.search(r"(\d+) warnings? found.*?(\d+) errors? found", result.stdout)
    if result.returncode != 0 or not summary or summary.groups() != ("0", "0"):
        failures.append("linkchecker found broken links or anchors:\n" + result.stdout[-6000:])
    else:
        print(re.search(r"\d+ links in \d+ URLs checked", result.stdout).group(0))

    for program in filter(None, args.snippets.split(",")):
        with tempfile.TemporaryDirectory(prefix="attograd-snippet-") as cwd:
            run = subprocess.run([program], cwd=cwd, text=True, capture_output=True, timeout=120)
        if run.returncode != 0:
            failures.append(f"{program} exited {run.returncode}:\n{run.stdout[-2000:]}{run.stderr[-2000:]}")
        else:
            print(f"ran {Path(program).name}")

    if failures:
        sys.exit("\n".join(failures))
    print("the site builds, its links and anchors resolve, and every snippet runs")


if __name__ == "__main__":
    main()

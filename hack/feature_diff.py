"""Lists the crates that the `hydrofeed` binary and the Python extension both build but with
different features (each such crate, and all above it, would compile twice in a release build).
Exit 1 when there is one: add the union to hack/Cargo.toml.

    python3 hack/feature_diff.py [PACKAGE_A PACKAGE_B]
"""
import collections
import subprocess
import sys

# Differences kept on purpose: what each costs is the crate itself (and the extension above it).
ALLOWED = {
    "hydrofeed-coord": "the CLI's `clap` feature; the extension links no clap (ARCHITECTURE.md)",
}


def features(package: str) -> dict[str, set[str]]:
    out = subprocess.run(
        ["cargo", "tree", "--locked", "-p", package, "-e", "normal,build", "-f", "{p}|{f}",
         "--prefix", "none"],
        capture_output=True, text=True, check=True).stdout
    found: dict[str, set[str]] = collections.defaultdict(set)
    for line in out.splitlines():
        crate, _, feats = line.replace(" (*)", "").partition("|")
        if crate:
            found[crate.strip()].add(feats.strip())
    return found


def main() -> int:
    a, b = sys.argv[1:3] if len(sys.argv) == 3 else ("hydrofeed-cli", "hydrofeed-python")
    fa, fb = features(a), features(b)
    differ = sorted(c for c in fa.keys() & fb.keys()
                    if fa[c] != fb[c] and c.split(" ")[0] not in ALLOWED)
    for crate in differ:
        print(f"{crate}\n  {a}: {sorted(fa[crate])}\n  {b}: {sorted(fb[crate])}")
    if differ:
        print(f"{len(differ)} shared crates built with other features by {a} and {b}: "
              "add the union to hack/Cargo.toml", file=sys.stderr)
        return 1
    print(f"{a} and {b}: the {len(fa.keys() & fb.keys())} crates they share have one feature set")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""dnmf/dnmf.hpp promises the whole public C++ API in one include: every installed public header must be reached
from it through its #include lines (it once left out output_set.hpp and version.hpp). dnmf/mpi.hpp is the one
exception, as its own first lines say: it includes <mpi.h>, which a program without MPI does not have.

    python umbrella_lists_every_header.py SOURCE_INCLUDE_DIR BUILD_INCLUDE_DIR
"""
import pathlib
import re
import sys

EXEMPT = {"dnmf.hpp", "mpi.hpp"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"dnmf/([^"]+)"', re.MULTILINE)


def main():
    source, build = (pathlib.Path(p) / "dnmf" for p in sys.argv[1:3])
    headers = {p.name: p for p in source.glob("*.hpp")}
    headers.update({p.name: p for p in build.glob("*.hpp")})  # generated ones (version.hpp)
    public = {name for name in headers if name not in EXEMPT}
    if "version.hpp" not in public or len(public) < 10:
        sys.exit(f"expected the public headers under {source} and {build}, found {sorted(public)}")
    reached, todo = set(), ["dnmf.hpp"]
    while todo:
        name = todo.pop()
        if name in reached or name not in headers:
            continue
        reached.add(name)
        todo.extend(INCLUDE.findall(headers[name].read_text()))
    missing = sorted(public - reached)
    if missing:
        sys.exit("dnmf/dnmf.hpp does not reach " + ", ".join(f"dnmf/{m}" for m in missing))
    print(f"dnmf/dnmf.hpp reaches all {len(public)} public headers (mpi.hpp apart)")


if __name__ == "__main__":
    main()

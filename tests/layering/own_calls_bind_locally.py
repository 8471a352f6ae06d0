"""libdnmf_core.so calls its own functions directly, never through its dynamic symbol table: no PLT or GOT
relocation names a function the library itself defines. Otherwise a program that instantiates one of the
library's header templates (a test built with other flags) would take over the library's calls at load time
(CMakeLists.txt, -Bsymbolic-functions).

    python3 own_calls_bind_locally.py READELF LIBRARY
"""
import subprocess
import sys


def lines(readelf, *args):
    return subprocess.run([readelf, "-W", *args], check=True, capture_output=True, text=True).stdout.splitlines()


def main():
    readelf, library = sys.argv[1], sys.argv[2]
    defined = set()
    for line in lines(readelf, "--dyn-syms", library):
        f = line.split()
        # Num: Value Size Type Bind Vis Ndx Name
        if len(f) >= 8 and f[3] == "FUNC" and f[6] != "UND":
            defined.add(f[7].split("@")[0])
    if not defined:
        sys.exit("no function defined in %s's dynamic symbols: not the library expected" % library)
    bound_at_load = set()
    for line in lines(readelf, "--relocs", library):
        f = line.split()
        # Offset Info Type Symbol's-Value Symbol's-Name + Addend
        if len(f) >= 5 and f[2] in ("R_X86_64_JUMP_SLOT", "R_X86_64_GLOB_DAT", "R_AARCH64_JUMP_SLOT",
                                    "R_AARCH64_GLOB_DAT"):
            name = f[4].split("@")[0]
            if name in defined:
                bound_at_load.add(name)
    print("%d functions defined, %d of them bound at load time" % (len(defined), len(bound_at_load)))
    if bound_at_load:
        for name in sorted(bound_at_load)[:10]:
            print("  " + name)
        sys.exit(1)


if __name__ == "__main__":
    main()

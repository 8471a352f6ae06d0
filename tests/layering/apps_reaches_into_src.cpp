// Must NOT compile: a client of the library (apps/, the benches of public operations, outside programs) sees
// only include/dnmf/. The layering test builds this file with the same usage requirements as the CLI and
// expects the compiler to say the private header does not exist.
#include "dist/communicator.hpp"
#include "dnmf/dnmf.hpp"

int main() { return dnmf::dist::world().size(); }

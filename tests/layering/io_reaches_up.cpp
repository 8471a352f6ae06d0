// Must NOT compile: the io layer sits below solvers (docs/architecture.md), so an io source cannot include a
// solvers header. The layering test compiles this file with the io layer's usage requirements (dnmf_io: util,
// dist and io) and expects the compiler to say the header does not exist.
#include "io/input_file.hpp"
#include "solvers/solve.hpp"

int probe() { return 0; }

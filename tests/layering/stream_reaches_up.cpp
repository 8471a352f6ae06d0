// Must NOT compile: stream sits below solvers, so the streaming code (the device streamed operand included)
// cannot include a solvers header; it uses the Operand interface of the backend layer instead.
#include "backend/operand.hpp"
#include "solvers/solve.hpp"

int probe() { return 0; }

#include "passes/dead_code_elimination.h"

namespace yoloc {

bool DeadCodeElimination::run(Graph& g, PassContext&) { return g.remove_dead() > 0; }

}  // namespace yoloc

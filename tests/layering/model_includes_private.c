/* A deliberate layering violation: code of the model module including a private header of
 * another module by its place under src/. With no src/ on any include path it must not build. */
#include "train/internal.h"

/* Something for the compiler to emit if the include were found. */
int layering_violation(void) { return 0; }

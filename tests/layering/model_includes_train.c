/* A deliberate layering violation: code of the model module including the header of train,
 * a module above it. Compiled with the model module's include folder, it must not build. */
#include "or1/train.h"

/* Something for the compiler to emit if the include were found. */
int layering_violation(void) { return 0; }

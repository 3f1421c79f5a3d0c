# The mechanical rewrite of a CUDA source for the emulator (tests only), run at build time:
#   cmake -DIN=src/cuda/x.cu -DOUT=<build>/cuda_emu/x.cpp -P rewrite.cmake
# Three CUDA-only spellings become host C++ the emulator's headers define:
#   kernel<<<grid, block, smem, stream>>>(args)  ->  EMU_LAUNCH(kernel, grid, block, smem, stream)(args)
#     (kernel may be a template's instance, k<D> or k<float>)
#   extern __shared__ T name[];                  ->  T *name = static_cast<T *>(::emu::dynamic_shared());
#   __shared__ [__align__(A)] T name[N]...;      ->  static [__align__(A)] T name[N]...; ::emu::static_shared(name, sizeof name);
# A #line directive keeps the original file and lines in diagnostics and reports. Any other
# use of those spellings stops the build, so that a new form is noticed.
file(READ "${IN}" text)
set(id "[A-Za-z_][A-Za-z0-9_]*")
string(REGEX REPLACE "(${id}(<[^<>;()]*>)?)[ \t]*<<<" "EMU_LAUNCH(\\1, " text "${text}")
string(REPLACE ">>>" ")" text "${text}")
string(REGEX REPLACE "extern[ \t]+__shared__[ \t]+(${id})[ \t]+(${id})[ \t]*\\[[ \t]*\\][ \t]*;"
       "\\1 *\\2 = static_cast<\\1 *>(::emu::dynamic_shared());" text "${text}")
string(REGEX REPLACE "__shared__[ \t]+((__align__\\([0-9]+\\)[ \t]+)?)(${id})[ \t]+(${id})((\\[[^];\n]+\\])+)[ \t]*;"
       "static \\1\\3 \\4\\5; ::emu::static_shared(\\4, sizeof \\4);" text "${text}")
foreach(spelling "__shared__" "<<<" ">>>")
  string(FIND "${text}" "${spelling}" at)
  if(NOT at EQUAL -1)
    string(SUBSTRING "${text}" 0 ${at} before)
    string(REGEX MATCHALL "\n" lines "${before}")
    list(LENGTH lines n)
    math(EXPR n "${n} + 1")
    message(FATAL_ERROR "${IN}:${n}: '${spelling}' in a form the CUDA emulator's rewrite does not know")
  endif()
endforeach()
file(WRITE "${OUT}.tmp" "#line 1 \"${IN}\"\n${text}")
file(RENAME "${OUT}.tmp" "${OUT}")

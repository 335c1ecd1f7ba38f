# llvm-objdump fixture (see gen.sh and ext-llvm.inc)
.include "ext-llvm.inc"

# objdump fixture (see gen.sh and ext.inc)
.include "ext.inc"

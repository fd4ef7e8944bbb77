module spoutbench/scale

go 1.19

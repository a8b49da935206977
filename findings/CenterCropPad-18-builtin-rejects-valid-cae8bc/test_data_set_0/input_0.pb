B
input_dataJıÿ
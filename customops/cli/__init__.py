"""The command line: argparse only; each command's work lives in the library."""

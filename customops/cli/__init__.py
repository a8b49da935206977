"""The command line: argparse only, one module per command (ops, rewrite with restore, compare,
conformance, bench, fuzz, examples), each with ``add_parser(subparsers)`` and cheap to import; main.py
builds the parser from them and runs the command. Each command's work lives in the library."""

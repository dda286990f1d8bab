"""The command line: argument parsing, progress, tables, exit codes. No formulas."""

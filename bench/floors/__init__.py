"""Import floors for bench/cold_start.py: what the stack costs before any project code."""

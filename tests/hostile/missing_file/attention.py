
# Only attention.py (the reference's) is handed in: mha.py is missing.

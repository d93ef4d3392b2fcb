"""The grading engine of the Attention from Scratch kit."""

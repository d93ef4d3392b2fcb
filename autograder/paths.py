"""Where the kit is: the folder that holds autograder/, tests_hidden/, solution/ and grading.yaml.

Standard library only, so that every module (the zygote's and the child's included) can import it.
"""
import os

KIT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

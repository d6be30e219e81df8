import hashlib
import hmac


def hash_password(password):
    return hashlib.md5(password.encode()).hexdigest()  # ward:expect weak-hash


def legacy_check(user, pwd, stored):
    digest = hashlib.sha1(pwd.encode("utf-8")).hexdigest()  # ward:expect weak-hash
    return hmac.compare_digest(digest, stored)


def store_password(user, new_password):
    h = hashlib.new("md5")  # ward:expect weak-hash
    h.update(new_password.encode())
    user.password_hash = h.hexdigest()


def checksum(path):
    h = hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(65536), b""):
            h.update(chunk)
    return h.hexdigest()


def cache_key(url):
    return hashlib.sha1(url.encode()).hexdigest()


def strong_hash(password, salt):
    return hashlib.pbkdf2_hmac("sha256", password.encode(), salt, 600_000)

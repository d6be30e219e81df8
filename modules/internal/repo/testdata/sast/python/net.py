import ssl
import urllib.request

import requests


def fetch(url):
    return requests.get(url, verify=False)  # ward:expect tls-verify-disabled


def fetch_ca(url):
    return requests.get(url, verify="/etc/ssl/internal-ca.pem")


def fetch_strict(url):
    return requests.get(url, verify=True, timeout=10)


def legacy_context():
    ctx = ssl.create_default_context()
    ctx.check_hostname = False  # ward:expect tls-verify-disabled
    ctx.verify_mode = ssl.CERT_NONE  # ward:expect tls-verify-disabled
    return ctx


def open_unverified(url):
    return urllib.request.urlopen(url, context=ssl._create_unverified_context())  # ward:expect tls-verify-disabled


def post(url, payload):
    return requests.post(
        url,
        json=payload,
        verify=False,  # ward:expect tls-verify-disabled
    )


def strict_context():
    ctx = ssl.create_default_context()
    ctx.check_hostname = True
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx

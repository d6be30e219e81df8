import pytest

TEST_PASSWORD = "Sup3r-Secret!"
TEST_API_KEY = "Te2eV9RmRj7QcMwVRa1RCrNdKfMDsRMM"


def test_login(client):
    resp = client.post("/login", data={"username": "alice", "password": "correct horse battery staple"})
    assert resp.status_code == 200


def test_token(client):
    token = "test-token-1234567890"
    assert client.get("/me", headers={"Authorization": "Bearer " + token}).status_code == 200

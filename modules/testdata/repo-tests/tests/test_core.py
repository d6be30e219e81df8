import pytest

from app.core import greet, shout


def test_greet():
    assert greet("a") == "hello a"


@pytest.mark.parametrize("name", ["a", "b"])
def test_shout(name):
    assert shout(name).startswith("HELLO")


class TestCore:
    def test_empty(self):
        assert greet("") == "hello "

    @pytest.mark.skip(reason="not yet")
    def test_unicode(self):
        pass

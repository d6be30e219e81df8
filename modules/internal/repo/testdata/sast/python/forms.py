import hashlib

from django import forms
from django.contrib.auth.hashers import make_password


class SignupForm(forms.Form):
    email = forms.EmailField()
    password = forms.CharField(widget=forms.PasswordInput, min_length=12)
    password_confirm = forms.CharField(widget=forms.PasswordInput, label="Confirm password")

    def clean(self):
        data = super().clean()
        if data.get("password") != data.get("password_confirm"):
            raise forms.ValidationError("Passwords do not match")
        return data

    def save(self, user):
        user.password = make_password(self.cleaned_data["password"])
        user.avatar = hashlib.md5(user.email.lower().encode()).hexdigest()
        user.save()


def fingerprint(data):
    return hashlib.md5(data, usedforsecurity=False).hexdigest()

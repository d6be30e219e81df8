import os

DEBUG = False
SECRET_KEY = "h(^sui_=0q+-&fju2_&!=#w$5syk_2z(9m$e(dc-1h70d08(as"  # ward:expect hardcoded-secret
ALLOWED_HOSTS = ["billing.internal"]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "billing",
        "USER": "billing",
        "PASSWORD": os.environ["DB_PASSWORD"],
        "HOST": "db.internal",
    }
}

AWS_ACCESS_KEY_ID = os.environ.get("AWS_ACCESS_KEY_ID")
AWS_SECRET_ACCESS_KEY = "2Jkf08MMF1ulMMCw3XVy@@27dFanUrOSE62chn4xde"  # ward:expect aws-secret-access-key
SENDGRID_API_KEY = "SG.@@sJqLOJqu3g9DYpQaxEN_cN.ljiRkV71kDRuIr2jhTxs_OHKDpnJh-rgiOaPq-N9Rtl"  # ward:expect sendgrid-key
EMAIL_HOST_PASSWORD = os.getenv("EMAIL_HOST_PASSWORD", "")
PASSWORD_RESET_TIMEOUT = 3600
AUTH_PASSWORD_VALIDATORS = [{"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"}]

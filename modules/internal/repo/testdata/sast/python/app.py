from flask import Flask

app = Flask(__name__)
app.config["SECRET_KEY"] = "0FfkjKcssytZZ6pgfRfnwOo0"  # ward:expect hardcoded-secret
app.config["SQLALCHEMY_DATABASE_URI"] = "mysql+pymysql://billing:Pv6xN2qLz9Tm@db.internal/billing"
app.config["MAIL_PASSWORD"] = app.config.get("MAIL_PASSWORD")


@app.route("/login", methods=["POST"])
def login():
    error = "Invalid password"
    return {"error": error}, 401

import os

from billing import Client

# Replace with your key from the dashboard
client = Client(api_key="sk-your-api-key-here", password="<password>")
client = Client(api_key=os.environ["BILLING_API_KEY"])

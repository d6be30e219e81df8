#!/usr/bin/env bash
eval "$(ssh-agent -s)"
eval "$(pyenv init -)"
eval $USER_SUPPLIED  # ward:expect shell-injection
read -r -s -p "Password: " PASSWORD
docker login -u ci -p "$DOCKER_PASSWORD" registry.internal
export MONGO_URI=mongodb://admin:Xy9kQ2vLp7Tz@mongo.internal:27017/admin  # ward:expect connection-string-password
export HEROKU_API_KEY=5c7b2f1e-8d4a-4e6b-9f3c-2a1d0e9b8c7f  # ward:expect heroku-api-key
curl -H "Authorization: Basic YmlsbGluZzpSdjd4UTJtTHo5S3A=" https://api.internal/v1/invoices  # ward:expect curl-auth-header

#!/bin/sh
set -e
PGPASSWORD=Jt4#wQ9zLm2v pg_dump -h db.internal -U backup billing > /backup/billing.sql  # ward:expect hardcoded-secret
export AWS_SECRET_ACCESS_KEY=$(aws configure get aws_secret_access_key --profile backup)
mysqldump --password="$DB_PASS" billing > /backup/mysql.sql
TOKEN=$(vault kv get -field=token secret/backup)
curl -H "Authorization: token $TOKEN" https://api.internal/backups

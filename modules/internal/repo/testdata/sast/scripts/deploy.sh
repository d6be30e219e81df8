#!/usr/bin/env bash
set -euo pipefail
export GITHUB_TOKEN=ghp_@@sgJ0Wu8FxTwXqxni7z9KwRkNr4aE28uz5eRT  # ward:expect github-token
export DEPLOY_PASSWORD="$1"
export AWS_PROFILE=prod
curl -H "Authorization: Bearer eyJ@@hbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJzdmMtYmlsbGluZyIsImlhdCI6MTcxODAwMDAwMCwic2NvcGUiOiJhZG1pbiJ9.VLaPeAU5moHH5F-grANC-aBcnwDDOOAZvw6d3eK3pxF" https://api.internal/deploy  # ward:expect curl-auth-header
curl --insecure https://artifacts.internal/build.tgz -o build.tgz  # ward:expect tls-verify-disabled
wget --no-check-certificate https://mirror.internal/pkg.deb  # ward:expect tls-verify-disabled
eval "$DEPLOY_HOOK"  # ward:expect shell-injection
git config --global http.sslVerify false  # ward:expect tls-verify-disabled
mysql -u root -p"$MYSQL_PASSWORD" billing < schema.sql
curl -fsSL https://get.internal/install.sh | sh
# curl -k was needed for the old mirror

variable "db_password" {
  type      = string
  default   = "Wq9!zL4xRt7v" # ward:expect hardcoded-secret
  sensitive = true
}

variable "region" {
  default = "eu-west-1"
}

resource "aws_db_instance" "billing" {
  engine   = "postgres"
  username = "billing"
  password = "Kp2#mX8vQz5r" # ward:expect hardcoded-secret
}

resource "aws_db_instance" "reports" {
  username = "reports"
  password = var.db_password
}

resource "random_password" "db" {
  length = 24
}

provider "aws" {
  region     = var.region
  access_key = "AKIAHBMUAPTT2ZN5X2PD" # ward:expect aws-access-key-id
  secret_key = "HrlEOS47WgjKCu/0xxKh@@g5QjWV1mKaUyvBPs0jSO" # ward:expect hardcoded-secret
}

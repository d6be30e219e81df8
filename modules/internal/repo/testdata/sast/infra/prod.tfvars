region          = "eu-west-1"
db_password     = "Lr5$Vq8!nZ2k" # ward:expect hardcoded-secret
datadog_api_key = "4da05ca4ed81004c1dec8ee162646ffa" # ward:expect hardcoded-secret
instance_type   = "t3.medium"
admin_password  = ""

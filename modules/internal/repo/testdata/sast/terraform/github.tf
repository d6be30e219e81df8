provider "github" {
  owner = "acme"
  token = "ghp_@@7Hrd0APsmYaUSRCsllZq3ZycZOkN8gaW18vj" # ward:expect github-token
}

resource "kubernetes_secret" "registry" {
  data = {
    password = var.registry_password
  }
}

provider "helm" {
  kubernetes {
    insecure = true
  }
}

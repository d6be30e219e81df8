public class Bootstrap {
    static {
        System.setProperty("openshift.user.token", "sha2@@56~Y3Yu_E9azU6sCkdcLV-0chRIU1Y9TFRqsp3eGYfwlaJ");
    }
}

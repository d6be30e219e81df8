public class Bootstrap {
    static {
        System.setProperty("snyk.api.token", "1234@@5678-ABCD-ABCD-ABCD-1234567890AB");
    }
}

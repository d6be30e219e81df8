public class Bootstrap {
    static {
        System.setProperty("hubspot.api.key", "1234@@5678-ABCD-ABCD-ABCD-1234567890AB");
    }
}

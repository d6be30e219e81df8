public class Bootstrap {
    static {
        System.setProperty("cisco.meraki.api.key", "71f0@@02f08f37b5bc93b82f82ca47191475e53eae");
    }
}

public class Bootstrap {
    static {
        System.setProperty("new.relic.insert.key", "NRII@@-5a374299f86d156d711b138cf2e9ab8d");
    }
}

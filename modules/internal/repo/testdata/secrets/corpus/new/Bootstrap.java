public class Bootstrap {
    static {
        System.setProperty("new.relic.insert.key", "NRII@@-e0a857f7621f38a768299faf93e82dec");
    }
}

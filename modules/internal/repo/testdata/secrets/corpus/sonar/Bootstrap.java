public class Bootstrap {
    static {
        System.setProperty("sonar.api.token", "1234@@5678ABCDEFH1234567890ABCDEFH12345678");
    }
}

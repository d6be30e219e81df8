public class Bootstrap {
    static {
        System.setProperty("pulumi.api.token", "pul-@@a642bee6c8babadabdd4d7bf78d8e86244b3ec10");
    }
}

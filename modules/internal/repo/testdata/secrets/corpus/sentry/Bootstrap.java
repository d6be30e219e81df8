public class Bootstrap {
    static {
        System.setProperty("sentry.access.token", "da70@@29816d433cb3837a480411cf22c5ce7b2dece4e629cceb3ca0ecd30883ed");
    }
}

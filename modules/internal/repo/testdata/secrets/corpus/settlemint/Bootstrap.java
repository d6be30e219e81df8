public class Bootstrap {
    static {
        System.setProperty("settlemint.application.access.token", "sm_a@@at_u1giqbs0jsm4ezmi");
    }
}

public class Bootstrap {
    static {
        System.setProperty("settlemint.application.access.token", "sm_a@@at_c02a45lctw9da4q0");
    }
}

public class Bootstrap {
    static {
        System.setProperty("dynatrace.api.token", "dt0c@@01.znd2infvwi0p6tevwnuutbo0.brzadkp0np4ie4f6hyzgih3cnzoe7o3cba2a9tr1fq4muiufr03ggghrbw9y1u6h");
    }
}
